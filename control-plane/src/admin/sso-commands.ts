// SSO clients and signing keys through the admin command line (areas/sso/): register, list and delete clients;
// rotate and list signing keys. With PGlite the commands run inside the control plane (admin socket); with a Postgres
// server every control-plane process picks up a rotated key within SSO_KEY_CHECK_MS.
import type { CommandContext } from './commands.js';
import { positionals, UsageError } from './args.js';
import { loadConfig } from '../config.js';
import { keyVault } from '../areas/ssl/key-vault.js';
import { deleteClient, listClients, MAX_REDIRECT_URIS, registerClient } from '../areas/sso/clients.js';
import { listSigningKeys, retiredKeySeconds, rotateSigningKey } from '../areas/sso/keys.js';

export const SSO_USAGE = `  sso client create NAME --redirect-uri URI [--redirect-uri URI …] [--public]
      (prints client_id and, for a confidential client, client_secret: shown once)
  sso client list
  sso client delete CLIENT_ID   (revokes everything issued to it)
  sso key rotate   (the previous key stays published until its tokens expire)
  sso key list`;

const iso = (d: Date | null) => (d ? d.toISOString() : '-');

export const SSO_COMMANDS: Record<string, (ctx: CommandContext, args: string[]) => Promise<void>> = {
  async 'sso client'(ctx, args) {
    const [action, ...rest] = args;
    if (action === 'create') {
      const { pos, values } = positionals(rest, ['NAME'], {
        'redirect-uri': { type: 'string', multiple: true },
        public: { type: 'boolean' },
      });
      const uris = (values['redirect-uri'] as unknown as string[] | undefined) ?? [];
      if (uris.length === 0 || uris.length > MAX_REDIRECT_URIS)
        throw new UsageError(`give 1 to ${MAX_REDIRECT_URIS} --redirect-uri`);
      const created = await registerClient(ctx.db, {
        name: pos[0],
        redirectUris: uris,
        public: values.public === true,
      });
      ctx.out(`client_id ${created.clientId}`);
      if (created.clientSecret) ctx.out(`client_secret ${created.clientSecret}`);
      else ctx.out('public client: no secret; it must use PKCE (S256)');
      return;
    }
    if (action === 'list') {
      positionals(rest, []);
      ctx.out('client_id\ttype\tcreated_at\tname\tredirect_uris');
      for (const c of await listClients(ctx.db))
        ctx.out(
          [
            c.clientId,
            c.secretHash ? 'confidential' : 'public',
            c.createdAt.toISOString(),
            c.name,
            c.redirectUris.join(' '),
          ].join('\t'),
        );
      return;
    }
    if (action === 'delete') {
      const { pos } = positionals(rest, ['CLIENT_ID']);
      if (!(await deleteClient(ctx.db, pos[0]))) throw new UsageError(`no client ${pos[0]}`);
      ctx.out(`deleted client ${pos[0]} and revoked everything issued to it`);
      return;
    }
    throw new UsageError('sso client create|list|delete');
  },
  async 'sso key'(ctx, args) {
    const [action, ...rest] = args;
    positionals(rest, []);
    if (action === 'rotate') {
      const config = ctx.config ?? loadConfig();
      const vault = keyVault({ dataDir: config.dataDir, certificateKey: config.certificateKey });
      const seconds = retiredKeySeconds(config.sso);
      const { kid, retired } = await rotateSigningKey(ctx.db, vault, seconds);
      ctx.out(`signing key ${kid} is active`);
      for (const r of retired) ctx.out(`key ${r} retired: published for ${seconds} s more`);
      return;
    }
    if (action === 'list') {
      ctx.out('kid\tstate\tcreated_at\tpublished_until');
      for (const k of await listSigningKeys(ctx.db))
        ctx.out([k.kid, k.retiredAt ? 'retired' : 'active', k.createdAt.toISOString(), iso(k.publishUntil)].join('\t'));
      return;
    }
    throw new UsageError('sso key rotate|list');
  },
};
