#!/usr/bin/env node
// Writes schema/mapping.schema.json, the JSON Schema editors apply to mapping files, from the zod
// schema the loader uses (src/mapping/json-schema.ts). Run by `npm run schema` after a change to
// src/mapping/_schema.ts; test/mapping/json-schema.test.ts fails while the file is out of date.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { MAPPING_SCHEMA_FILE, mappingJsonSchemaText } from '../dist/mapping/json-schema.js';

mkdirSync(dirname(MAPPING_SCHEMA_FILE), { recursive: true });
writeFileSync(MAPPING_SCHEMA_FILE, mappingJsonSchemaText());
process.stdout.write(`wrote ${MAPPING_SCHEMA_FILE}\n`);
