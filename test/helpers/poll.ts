/**
 * Polls `check` every 20 ms until it holds or `ms` have passed; returns whether it held. For what
 * another instance learns through a database notification, a moment after the change.
 */
export async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}
