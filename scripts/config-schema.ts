// Writes config/config.schema.json from the TypeBox definitions (`npm run config:schema`);
// with --check, fails when the shipped file is stale instead of writing it.
import { readFileSync, writeFileSync } from 'node:fs'
import { CONFIG_SCHEMA_PATH, configJsonSchema } from '../src/service/config/index.ts'

const wanted = configJsonSchema()
if (process.argv.includes('--check')) {
  if (readFileSync(CONFIG_SCHEMA_PATH, 'utf8') !== wanted) {
    console.error(`${CONFIG_SCHEMA_PATH} is stale: run npm run config:schema`)
    process.exit(1)
  }
} else {
  writeFileSync(CONFIG_SCHEMA_PATH, wanted)
  console.log(`wrote ${CONFIG_SCHEMA_PATH}`)
}
