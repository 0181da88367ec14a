import type { RegisterCommand } from './context.js';

// Placeholder: replaced by the real command.
export const registerJobs: RegisterCommand = (program, ctx) => {
  program
    .command('jobs')
    .description('(not built yet)')
    .allowUnknownOption()
    .action(() => {
      ctx.io.err('quote-batch jobs: not built yet\n');
      ctx.setExitCode(2);
    });
};
