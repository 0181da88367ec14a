import type { RegisterCommand } from './context.js';

// Placeholder: replaced by the real command.
export const registerPreview: RegisterCommand = (program, ctx) => {
  program
    .command('preview')
    .description('(not built yet)')
    .allowUnknownOption()
    .action(() => {
      ctx.io.err('quote-batch preview: not built yet\n');
      ctx.setExitCode(2);
    });
};
