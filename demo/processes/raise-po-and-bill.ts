import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  id: 'acme:raise-po-and-bill',            // the :id an app invokes
  input: {                                 // JSON Schema — validated at invoke
    type: 'object',
    properties: { vendorId: { type: 'string' }, amount: { type: 'number' } },
    required: ['vendorId', 'amount'],
  },
  steps: [
    {
      id: 'po',
      recordType: 'purchaseOrder',
      awaitSource: true,                   // hold the next step for the source's verdict
      build: (ctx) => ({ parent: { entity_id: ctx.input.vendorId } }),
    },
    {
      id: 'bill',
      recordType: 'vendorBill',
      build: async (ctx) => {
        // a read, as the invoking user — exactly what POST /v1/batch does
        const [vendor] = await ctx.query(`entity?select=terms_id&entity_type=eq.vendor&external_id=eq.${ctx.input.vendorId}`);
        return {
          parent: {
            created_from_id: ctx.steps.po?.externalId,   // the id the source minted for step one
            entity_id: ctx.input.vendorId,
            terms_id: vendor?.terms_id ?? null,
          },
        };
      },
    },
  ],
  onFailure: 'rollback',                   // undo what landed when a step fails
});
