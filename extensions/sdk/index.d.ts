// Authoring types for @turbobase/extensions. Typecheck locally with `tsc --noEmit`.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Row = { [column: string]: Json };

export interface StepOutcome {
  pgRowId: string | null;
  externalId: string | null;
  disposition: 'confirmed' | 'failed' | 'skipped' | 'rolled_back';
  /** An AI step's answer (text, or a value fitting its `ai.schema`); reused for the rest of the run. */
  answer?: Json;
  /** A task step's output: the JSON its assignee completed it with (null if rejected or expired). */
  output?: Json;
  /** A waitFor step's event: the one that resumed it, or null when its timeout came first. */
  event?: EventReceived | null;
  /** A sleep step's due time (ISO 8601): when the run was parked until. */
  wakeAt?: string;
}

/** An event as a waitFor step received it (`POST /v1/events`). */
export interface EventReceived {
  eventId: string;
  name: string;
  data: { [key: string]: Json };
  key: string | null;
  receivedAt: string;
}

export interface ProcessContext<I = any> {
  /** The invoke body, already validated against `input`. */
  input: I;
  runId: string;
  /** Every earlier step's outcome, keyed by step id (`group:index:step` inside a repeated group). */
  steps: { [stepId: string]: StepOutcome | undefined };
  /** The source row this pass is migrating (eachRow processes only). */
  row?: Row;
  /** The element and position of a repeated group's iteration. */
  item?: any;
  index?: number;
  log(...args: Json[]): void;
  /** A GET-only PostgREST read, run as the invoking user: the whole result or it throws. */
  query(pathAndQuery: string): Promise<Row[]>;
}

export interface Payload {
  parent: { [field: string]: Json };
  lines?: { [field: string]: Json }[];
}

type Maybe<T> = T | Promise<T>;
type CtxFn<T> = (ctx: ProcessContext) => Maybe<T>;

export interface UpdateAddress {
  step?: string;
  pgRowId?: CtxFn<string | undefined>;
  externalId?: CtxFn<string | undefined>;
  expectedSyncVersion?: CtxFn<number>;
}

export interface DeleteAddress {
  pgRowId?: CtxFn<string | undefined>;
  externalId?: CtxFn<string | undefined>;
  sourceSystem?: string;
}

interface StepBase {
  id: string;
  recordType: string;
  awaitSource?: boolean;
  when?: CtxFn<boolean>;
  description?: string;
}

export interface WriteStep extends StepBase {
  build: CtxFn<Payload | null>;
  update?: UpdateAddress;
  rollback?: 'undo' | 'keep';
}

export interface DeleteStep extends StepBase {
  delete: DeleteAddress;
  build?: never;
  rollback?: 'keep';
  onRefused?: 'stop' | 'continue';
}

/** A question to the instance's AI provider; it writes no record. Its answer is `ctx.steps[id].answer`. */
export interface AiStep {
  id: string;
  ai: { prompt: CtxFn<string>; schema?: { [keyword: string]: Json } };
  when?: CtxFn<boolean>;
  description?: string;
}

/**
 * A person's decision; it writes no record. The run parks (`awaitingAction`) until the assignee
 * completes the task (`ctx.steps[id].output`) or rejects it (the step fails `TASK_REJECTED`), or
 * its `timeout` passes (`TASK_EXPIRED`); `onRefused` decides whether a failed task ends the run.
 */
export interface TaskStep {
  id: string;
  task: {
    /** A username, or `group:<name>` (anyone in that Django group). */
    assignee: string | CtxFn<string>;
    title: string | CtxFn<string>;
    details?: CtxFn<{ [key: string]: Json } | null>;
    /** '30s', '15m', '2h', '7d': how long it waits; none waits on. */
    timeout?: string;
  };
  when?: CtxFn<boolean>;
  onRefused?: 'stop' | 'continue';
  rollback?: 'undo' | 'keep';
  description?: string;
}

/**
 * Wait for an event; it writes no record. The run parks (`awaitingInput`, holding no worker) until
 * an event of that name whose `data` holds every key/value of `match` (worked out when the run
 * parks), received after the run was created, resumes it — `ctx.steps[id].event` — or `timeout`
 * passes, and the run carries on with `event: null` (branch on it with `when`).
 */
export interface WaitForStep {
  id: string;
  waitFor: {
    event: string;
    match?: CtxFn<{ [key: string]: Json }>;
    /** '30s', '15m', '2h', '14d': how long it waits at most. */
    timeout: string;
  };
  when?: CtxFn<boolean>;
  description?: string;
}

/**
 * Sleep; it writes no record. The run parks (`awaitingTime`, `wakeAt` on its read, holding no
 * worker) and goes on within about a second after that time — `ctx.steps[id].wakeAt`. A literal
 * that is no duration is refused at deploy; a function that returns none fails the step
 * `SLEEP_DURATION_INVALID`.
 */
export interface SleepStep {
  id: string;
  /** '30s', '15m', '2h', '30d' (a whole number and one unit), or worked out from the context. */
  sleep: string | CtxFn<string>;
  when?: CtxFn<boolean>;
  description?: string;
}

export interface StepGroup {
  id: string;
  forEach: { input: string };
  steps: (WriteStep | DeleteStep | AiStep | TaskStep | WaitForStep | SleepStep)[];
  description?: string;
}

export type Step =
  | WriteStep
  | DeleteStep
  | AiStep
  | TaskStep
  | WaitForStep
  | SleepStep
  | StepGroup;

/**
 * What starts a run besides an invoke or a schedule: a record entering a state (one run per
 * transition, as the writer, input { recordType, pgRowId, externalId, record }), or every new
 * event of a name (input: the event's data, as the sender).
 */
export type Trigger =
  | { record: string; enters: { [field: string]: string | number | boolean | null } }
  | { event: string };

export interface ProcessDefinition<I = any> {
  id: string;
  input: { [keyword: string]: Json };
  steps: Step[];
  eachRow?: { outstanding: (input: I) => string; key: string };
  onFailure?: 'stop' | 'rollback';
  description?: string;
  trigger?: Trigger;
}

export interface HookContext {
  slot: 'before_save' | 'before_delete' | 'after_delete';
  recordType: string;
  operation: 'create' | 'update' | 'delete';
  record: { pgRowId: string | null; externalId: string | null; parent: Row; lines: Row[] };
  changes: Row;
  log(...args: Json[]): void;
}

/** Return nothing to let the write through, or a rejection to refuse it. */
export type HookResult = void | { reject: { code: string; field?: string; message: string } };

export interface HookDefinition {
  id: string;
  recordType: string;
  on: 'before_save' | 'before_delete' | 'after_delete';
  run(ctx: HookContext): Maybe<HookResult>;
}

export function defineProcess<I = any>(definition: ProcessDefinition<I>): ProcessDefinition<I>;
export function defineHook(definition: HookDefinition): HookDefinition;
/** Refused at deploy: conduits are not supported on this instance yet. */
export function defineConduit(definition: { id: string; [key: string]: unknown }): never;
