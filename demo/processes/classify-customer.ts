import { defineProcess } from '@turbobase/extensions';

// An AI step: the instance's provider (the deterministic `local` one in the demo) picks a segment,
// and the next step writes it. Asked once per run; the answer is on the ledger.
export default defineProcess({
  id: 'acme:classify-customer',
  input: {
    type: 'object',
    properties: { name: { type: 'string', minLength: 1 } },
    required: ['name'],
  },
  steps: [
    {
      id: 'classify',
      ai: {
        prompt: (ctx) => `Is ${ctx.input.name} a retail or a wholesale customer?`,
        schema: {
          type: 'object',
          properties: { segment: { enum: ['retail', 'wholesale'] } },
          required: ['segment'],
        },
      },
    },
    {
      id: 'customer',
      recordType: 'customer',
      build: (ctx) => ({
        parent: { company_name: ctx.input.name, memo: `segment: ${(ctx.steps.classify?.answer as any)?.segment}` },
      }),
    },
  ],
});
