import type { RegisterCommand } from './context.js';

// Placeholder: replaced by the real command.
export const registerSandbox: RegisterCommand = (program, ctx) => {
  program
    .command('sandbox')
    .description('(not built yet)')
    .allowUnknownOption()
    .action(() => {
      ctx.io.err('quote-batch sandbox: not built yet\n');
      ctx.setExitCode(2);
    });
};
