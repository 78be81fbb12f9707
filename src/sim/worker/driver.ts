// Runs an EngineModel in real time: one scheduler step at a time, each followed by a wait of its
// modelled duration, then the step's tokens go to their requests and its KV events to the
// publisher. Engine time runs ahead of the wall clock by at most one step and catches up after a
// late timer, so many sub-millisecond steps (high speedups) keep the modelled rate on average
// instead of being rounded up to a timer tick each.

/** What the driver needs of the engine model (src/sim/engine's EngineModel). */
export interface SteppableModel<Req, Out extends { id: string; finishReason?: string }, Ev> {
  submit(req: Req, nowMs: number): void;
  abort(id: string, nowMs: number): boolean;
  release(id: string): boolean;
  hasWork(): boolean;
  step(nowMs: number): { startMs: number; durationMs: number; outputs: Out[]; events: Ev[] } | null;
}

export interface RequestSink<Out> {
  /** Each generated token, the last one with its finishReason. */
  onToken(out: Out): void;
  /** The engine went away (restart) before the request finished. */
  onError(err: Error): void;
}

export interface DriverOptions<Ev> {
  clock?: () => number;
  /** Each step's KV events, after the step's wait. */
  onEvents(events: Ev[]): void;
  /** A factor on step durations (the "slow" fault); read at every step. */
  slowFactor?: () => number;
  /** A factor turning the model's step duration into wall ms (1 when the model applies its speedup). */
  timeScale?: number;
}

/** setTimeout's limit; a longer step (a huge slow factor) simply completes at the limit. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class EngineDriver<Req extends { id: string }, Out extends { id: string; finishReason?: string }, Ev> {
  private readonly sinks = new Map<string, RequestSink<Out>>();
  private readonly clock: () => number;
  private readonly timeScale: number;
  private engineTimeMs = 0;
  private scheduled = false;
  private paused = false;
  private closed = false;
  /** A finished step that waits for the end of a pause. */
  private stalled?: () => void;
  /** Bumped on every model swap: a step of the old model in flight is discarded. */
  private generation = 0;
  private stepsRun = 0;
  private timer?: NodeJS.Timeout;

  constructor(
    private current: SteppableModel<Req, Out, Ev>,
    private readonly opts: DriverOptions<Ev>,
  ) {
    this.clock = opts.clock ?? Date.now;
    this.timeScale = opts.timeScale ?? 1;
    this.engineTimeMs = this.clock();
  }

  get model(): SteppableModel<Req, Out, Ev> {
    return this.current;
  }

  get activeRequests(): number {
    return this.sinks.size;
  }

  get steps(): number {
    return this.stepsRun;
  }

  /** Submits a request (the model's TypeError/RangeError propagate) and starts stepping. */
  submit(req: Req, sink: RequestSink<Out>): void {
    if (this.closed) throw new Error('the engine is closed');
    if (this.sinks.has(req.id)) throw new RangeError(`request id ${req.id} is already running`);
    this.current.submit(req, this.now());
    this.sinks.set(req.id, sink);
    this.kick();
  }

  /** Stops a request (the client left); nothing more is delivered for it. */
  abort(id: string): boolean {
    if (!this.sinks.delete(id)) return false;
    this.current.abort(id, this.now());
    this.kick();
    return true;
  }

  /** Frees the blocks a finished prefill held. */
  release(id: string): boolean {
    const released = this.current.release(id);
    if (released) this.kick();
    return released;
  }

  /** Freezes the engine (the "hang" fault): no steps, no tokens, no events until resumed. */
  setPaused(paused: boolean): void {
    if (this.paused === paused) return;
    this.paused = paused;
    if (paused) return;
    const stalled = this.stalled;
    this.stalled = undefined;
    if (stalled) stalled();
    else this.kick();
  }

  /** Swaps in a fresh model (engine restart): every running request fails with `err`. */
  replaceModel(model: SteppableModel<Req, Out, Ev>, err: Error): void {
    this.generation++;
    clearTimeout(this.timer);
    this.current = model;
    // The old model's step in flight is gone with it: engine time restarts from the wall clock.
    this.engineTimeMs = this.clock();
    this.scheduled = false;
    this.stalled = undefined;
    const sinks = [...this.sinks.values()];
    this.sinks.clear();
    for (const s of sinks) s.onError(err);
  }

  close(): void {
    this.closed = true;
    this.generation++;
    clearTimeout(this.timer);
    this.sinks.clear();
  }

  private now(): number {
    return Math.max(this.clock(), this.engineTimeMs);
  }

  private kick(): void {
    if (this.scheduled || this.paused || this.closed) return;
    this.scheduled = true;
    const gen = this.generation;
    setImmediate(() => {
      if (gen !== this.generation) return;
      this.scheduled = false;
      this.runStep();
    });
  }

  private runStep(): void {
    if (this.paused || this.closed || this.scheduled) return;
    const model = this.current;
    if (!model.hasWork()) return;
    // After idling, engine time restarts from the wall clock; otherwise it is the previous step's end.
    const start = Math.max(this.engineTimeMs, this.clock());
    const r = model.step(start);
    if (!r) return;
    this.stepsRun++;
    const slow = this.opts.slowFactor?.() ?? 1;
    const wallMs = Math.max(0, r.durationMs) * this.timeScale * slow;
    this.engineTimeMs = start + wallMs;
    this.scheduled = true;
    const gen = this.generation;
    const complete = () => {
      if (gen !== this.generation) return;
      if (this.paused) {
        this.stalled = complete;
        return;
      }
      this.scheduled = false;
      this.deliver(r.outputs, r.events);
      this.runStep();
    };
    const delay = this.engineTimeMs - this.clock();
    // Timers cannot wait less than ~1 ms: shorter waits run at once and are made up later.
    if (delay >= 1) this.timer = setTimeout(complete, Math.min(delay, MAX_TIMER_MS));
    else setImmediate(complete);
  }

  private deliver(outputs: Out[], events: Ev[]): void {
    if (events.length > 0) this.opts.onEvents(events);
    for (const out of outputs) {
      const sink = this.sinks.get(out.id);
      if (!sink) continue;
      if (out.finishReason !== undefined) this.sinks.delete(out.id);
      sink.onToken(out);
    }
  }
}
