import { defineHook } from '@turbobase/extensions';

// The demo's hook: a legacy customer needs a company name that is more than white space.
export default defineHook({
  id: 'acme:legacy-customer-name',
  recordType: 'legacy_customer',
  on: 'before_save',
  run(ctx) {
    const name = ctx.record.parent.company_name;
    if (typeof name !== 'string' || name.trim() === '') {
      return {
        reject: { code: 'COMPANY_NAME_REQUIRED', field: 'parent.company_name', message: 'a legacy customer needs a company name' },
      };
    }
    return undefined;
  },
});
