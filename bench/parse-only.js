#!/usr/bin/env node
// csv-parse alone over a CSV file: the floor `check` is compared with. Streams the file through
// csv-parse's stream API and counts records, nothing else.
//
//   node bench/parse-only.js <file.csv> [--records arrays|objects]
//
// `objects` (the default) is `columns: true`, records keyed by the header, as an application
// using csv-parse would read a lead file; `arrays` is `columns: false`, csv-parse's fastest mode.
// Both with `bom: true` and `skip_empty_lines: true`, like quote-batch's reader. Prints one JSON
// line: records, wall seconds of the parse, CPU seconds of this process (parse only).
import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';

const [file, ...rest] = process.argv.slice(2);
if (file === undefined) {
  console.error('usage: node bench/parse-only.js <file.csv> [--records arrays|objects]');
  process.exit(2);
}
const modeIndex = rest.indexOf('--records');
const mode = modeIndex >= 0 ? rest[modeIndex + 1] : 'objects';
if (mode !== 'arrays' && mode !== 'objects') throw new Error('--records must be arrays or objects');

const cpu0 = process.cpuUsage();
const t0 = performance.now();
let records = 0;
const parser = createReadStream(file, { highWaterMark: 256 * 1024 }).pipe(
  parse({ bom: true, skip_empty_lines: true, columns: mode === 'objects' }),
);
for await (const record of parser) {
  if (record !== undefined) records += 1;
}
const seconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
process.stdout.write(`${JSON.stringify({ records, mode, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 })}\n`);
