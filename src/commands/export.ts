import type { RegisterCommand } from './context.js';

// Placeholder: replaced by the real command.
export const registerExport: RegisterCommand = (program, ctx) => {
  program
    .command('export')
    .description('(not built yet)')
    .allowUnknownOption()
    .action(() => {
      ctx.io.err('quote-batch export: not built yet\n');
      ctx.setExitCode(2);
    });
};
