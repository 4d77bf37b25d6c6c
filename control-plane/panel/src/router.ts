// Client-side navigation under /panel/: links change the history, the app re-renders from location.pathname.
const listeners = new Set<() => void>();

export function navigate(path: string): void {
  history.pushState(null, '', path);
  for (const l of listeners) l();
}

export function onNavigate(listener: () => void): () => void {
  listeners.add(listener);
  window.addEventListener('popstate', listener);
  return () => {
    listeners.delete(listener);
    window.removeEventListener('popstate', listener);
  };
}

/** onClick of an in-panel <a href>: a plain click navigates in place; modified clicks keep the browser's behaviour. */
export function link(e: MouseEvent): void {
  const a = e.currentTarget as HTMLAnchorElement;
  if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(a.getAttribute('href')!);
}
