#!/usr/bin/env node
// The CLI is TypeScript run through tsx, so a clone works with `npx frost` and no build step.
import { register } from 'tsx/esm/api';
register();
await import('../clients/cli/main.ts');
