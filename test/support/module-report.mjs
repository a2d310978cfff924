// Loaded with `node --import` by test/integration/process-modules.test.ts: every package module the
// process resolves (import or require) is reported on stderr as `module-report <url>`.
import { registerHooks } from 'node:module';

registerHooks({
  resolve(specifier, context, next) {
    const r = next(specifier, context);
    if (r.url.includes('/node_modules/')) process.stderr.write(`module-report ${r.url}\n`);
    return r;
  },
});
