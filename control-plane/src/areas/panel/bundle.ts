// The panel's JavaScript: control-plane/panel/src bundled by esbuild (Preact + htm, minified, one ES module) the first
// time it is asked for, then kept in memory; the stylesheet read once.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const PANEL_DIR = fileURLToPath(new URL('../../../panel/', import.meta.url));

export interface PanelAssets {
  js: Buffer;
  css: Buffer;
}

let assets: Promise<PanelAssets> | undefined;

async function bundle(): Promise<PanelAssets> {
  const result = await build({
    entryPoints: [`${PANEL_DIR}src/main.ts`],
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
    tsconfig: `${PANEL_DIR}tsconfig.json`,
  });
  return { js: Buffer.from(result.outputFiles[0]!.contents), css: await readFile(`${PANEL_DIR}panel.css`) };
}

export function panelAssets(): Promise<PanelAssets> {
  assets ??= bundle().catch((err: unknown) => {
    assets = undefined;
    throw err;
  });
  return assets;
}
