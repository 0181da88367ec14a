import type { RegisterCommand } from './context.js';

// Placeholder: replaced by the real command.
export const registerCheck: RegisterCommand = (program, ctx) => {
  program
    .command('check')
    .description('(not built yet)')
    .allowUnknownOption()
    .action(() => {
      ctx.io.err('quote-batch check: not built yet\n');
      ctx.setExitCode(2);
    });
};
