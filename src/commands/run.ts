import type { RegisterCommand } from './context.js';

// Placeholder: replaced by the real command.
export const registerRun: RegisterCommand = (program, ctx) => {
  program
    .command('run')
    .description('(not built yet)')
    .allowUnknownOption()
    .action(() => {
      ctx.io.err('quote-batch run: not built yet\n');
      ctx.setExitCode(2);
    });
};
