#!/usr/bin/env node
// The CLI is TypeScript run through tsx, so the published package needs no build step.
import { register } from 'tsx/esm/api'

register()
await import('../src/cli/main.ts')
