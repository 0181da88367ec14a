import type { RegisterCommand } from './context.js';

// Placeholder: replaced by the real command.
export const registerAgents: RegisterCommand = (program, ctx) => {
  program
    .command('agents')
    .description('(not built yet)')
    .allowUnknownOption()
    .action(() => {
      ctx.io.err('quote-batch agents: not built yet\n');
      ctx.setExitCode(2);
    });
};
