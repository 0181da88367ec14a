import type { RegisterCommand } from './context.js';

// Placeholder: replaced by the real command.
export const registerReport: RegisterCommand = (program, ctx) => {
  program
    .command('report')
    .description('(not built yet)')
    .allowUnknownOption()
    .action(() => {
      ctx.io.err('quote-batch report: not built yet\n');
      ctx.setExitCode(2);
    });
};
