import { defineProcess } from '@turbobase/extensions';

// Seed 004's trial-to-paid in the declarative contract: a welcome, a trial on the clock, a wait for
// the customer's payment, and a person's check-in when it never came. Each wait parks the run with
// its own pending reason (awaitingTime, awaitingInput, awaitingAction) and holds no worker.
export default defineProcess({
  id: 'acme:trial-to-paid',
  description: 'Welcome a trial customer, wait out the trial and the payment, check in if unpaid',
  input: {
    type: 'object',
    properties: { customer: { type: 'string', minLength: 1 }, trial: { type: 'string' } },
    required: ['customer'],
  },
  steps: [
    {
      id: 'welcome',
      recordType: 'message',
      build: (ctx) => ({
        parent: { to: ctx.input.customer, purpose: 'onboarding', body: 'Welcome aboard.', status: 'trial' },
      }),
    },
    { id: 'trial', sleep: (ctx) => ctx.input.trial ?? '1m' },  // a real trial is '14d'
    {
      id: 'paid',
      // POST /v1/events {"name": "order.paid", "data": {"customer": "…"}} ends this wait; the
      // seed waits '14d', the demo five minutes so that you see the check-in task come
      waitFor: { event: 'order.paid', match: (ctx) => ({ customer: ctx.input.customer }), timeout: '5m' },
    },
    {
      id: 'check-in',
      when: (ctx) => ctx.steps.paid.event === null,
      task: {
        assignee: 'demo',
        title: (ctx) => `Check in with ${ctx.input.customer}: the trial ended unpaid`,
        details: (ctx) => ({ customer: ctx.input.customer }),
        timeout: '7d',
      },
    },
    {
      id: 'outcome',
      recordType: 'message',
      update: { pgRowId: (ctx) => ctx.steps.welcome.pgRowId },
      build: (ctx) => ({
        parent: {
          status: ctx.steps.paid.event ? 'paid' : 'unpaid',
          note: ctx.steps.paid.event
            ? `paid (event ${ctx.steps.paid.event.eventId})`
            : `unpaid; checked in: ${JSON.stringify(ctx.steps['check-in'].output ?? null)}`,
        },
      }),
    },
  ],
});
