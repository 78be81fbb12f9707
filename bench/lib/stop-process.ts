// Ends a child process the bench started: asks it to stop (a message, a signal, "quit" on its
// stdin), and kills it if it has not exited after a grace period.
import type { ChildProcess } from 'node:child_process';

export async function stopProcess(child: ChildProcess, ask: () => void, graceMs = 5_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  ask();
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
