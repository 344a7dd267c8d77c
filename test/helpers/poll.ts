/**
 * Polls `check` every `everyMs` until it holds or `ms` have passed; returns whether it held. For what
 * another instance learns through a database notification, a moment after the change, and for
 * what a server recovers by itself.
 */
export async function within(ms: number, check: () => Promise<boolean>, everyMs = 20): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
