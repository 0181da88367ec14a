import type { Command } from 'commander';
import type { CommandContext } from './context.js';
import { registerRun } from './run.js';
import { registerPreview } from './preview.js';
import { registerCheck } from './check.js';
import { registerReport } from './report.js';
import { registerExport } from './export.js';
import { registerJobs } from './jobs.js';
import { registerAgents } from './agents.js';
import { registerSandbox } from './sandbox.js';
import { registerResolve } from './resolve.js';
import { registerPrune } from './prune.js';
import { registerInit } from './init.js';

/** Declares every command on `program`, in the order `--help` lists them. */
export function registerCommands(program: Command, ctx: CommandContext): void {
  for (const register of [
    registerRun, registerPreview, registerCheck, registerReport,
    registerInit, registerExport, registerJobs, registerAgents, registerSandbox, registerResolve, registerPrune,
  ]) {
    register(program, ctx);
  }
}
