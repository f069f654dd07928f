import { defineProcess } from '@turbobase/extensions';

export default defineProcess({
  // Keep this the FIRST `id:` in the file — see "Deploying a new version".
  id: 'acme:migrate-customers-tracked',
  input: { type: 'object', properties: { batch: { type: 'string' } }, additionalProperties: false },
  eachRow: {
    // Select pg_row_id: the update step below addresses the row by it.
    outstanding: (input) =>
      `migration_item?select=pg_row_id,legacy_id,company_name&status=eq.pending&batch=eq.${input.batch}&order=legacy_id`,
    key: 'legacy_id',
  },
  steps: [
    {
      id: 'create',
      recordType: 'customer',
      build: (ctx) => ({ parent: { company_name: ctx.row!.company_name } }),
    },
    {
      id: 'mark',
      recordType: 'migration_item',                         // the record type of the row you change
      update: { pgRowId: (ctx) => ctx.row!.pg_row_id as string },
      rollback: 'keep',
      build: (ctx) => ({
        parent: { status: 'sent', target_pg_row_id: ctx.steps.create?.pgRowId ?? null },
      }),
    },
  ],
});
