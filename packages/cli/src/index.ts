export { BaseCommand, type CommandArgs, type CommandFlags } from './base-command.js';
export { EXIT_CODE_BY_API_ERROR, ExitCode, exitCodeForApiError } from './exit-codes.js';
export {
  CliErrorCode,
  CliFailure,
  describeFailure,
  failureToJson,
  type FailureJson,
  type FailureReport,
} from './errors.js';
export {
  configDirectory,
  configFilePath,
  DEFAULT_API_URL,
  DEFAULT_PROFILE,
  maskApiKey,
  readConfigFile,
  resolveSettings,
  writeConfigFile,
  type ConfigFile,
  type Env,
  type ResolvedSettings,
  type SettingSource,
  type StoredProfile,
} from './config.js';
export { headersFromFlags, parseHeaderFlag } from './headers.js';
