// The process-only subpath: `import { defineProcess } from '@turbobase/extensions/process'`.
export { defineProcess, ProcessDefinition, ProcessContext, Step, WriteStep, DeleteStep, AiStep, TaskStep, WaitForStep, SleepStep, EventReceived, StepGroup, Payload, Row, Json, StepOutcome, Trigger } from './index';
