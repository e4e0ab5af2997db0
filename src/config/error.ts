// The one error a bad configuration raises. Apart from config.ts so that the CLI can recognise it
// without loading the schemas (zod) before a command needs them.

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: readonly { variable: string; reason: string }[]) {
    super(`Invalid configuration; fix these environment variables and start again:\n${problems.map((p) => `  ${p.variable}: ${p.reason}`).join('\n')}`);
  }
}
