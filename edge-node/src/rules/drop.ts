// drop: answer a status (default 403) with an optional body, or close the connection without an answer.
import type { RuleBody } from '@platform/shared/match';

export interface DropAction {
  close: boolean;
  status: number;
  body: string;
}

export function compileDrop(f: RuleBody): DropAction {
  return { close: f.action === 'close', status: Number(f.status_code ?? 403), body: String(f.body ?? '') };
}
