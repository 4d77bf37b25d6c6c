// Notification row → API body.
import type { NotificationRow } from './store.js';

export function presentNotification(n: NotificationRow) {
  return {
    id: n.id,
    category: n.category,
    kind: n.kind,
    title: n.title,
    body: n.body,
    domain: n.domain,
    data: n.data,
    read: n.readAt !== null,
    read_at: n.readAt ? n.readAt.toISOString() : null,
    created_at: n.createdAt.toISOString(),
  };
}
