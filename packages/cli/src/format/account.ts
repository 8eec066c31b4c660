import type { WhoamiOut } from '@hookrelay/shared';
import { describeSource, type SettingSource } from '../config.js';
import { formatKeyValues } from './key-value.js';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe } from './text.js';

export interface WhoamiView extends WhoamiOut {
  api_url: string;
  /** The stored profile the key came from; null when the key came from a flag or the environment. */
  profile: string | null;
}

export function formatWhoami(view: WhoamiView, keySource: SettingSource | undefined, style: Style): string {
  view = terminalSafe(view);
  return formatKeyValues(
    [
      ['Project', `${style.bold(view.project_name)} (${view.project_id})`],
      ['API key', view.api_key_id],
      ['API URL', view.api_url],
      ['Key from', keySource === undefined ? undefined : keySource === 'profile' ? `profile "${view.profile ?? ''}"` : describeSource(keySource)],
    ],
    style,
  );
}

export interface LoginView extends WhoamiOut {
  profile: string;
  api_url: string;
  config_path: string;
}

export function formatLogin(view: LoginView, style: Style): string {
  view = terminalSafe(view);
  return `${style.green('Logged in')} to project ${style.bold(view.project_name)} (${view.project_id}) at ${view.api_url}\n${formatKeyValues(
    [
      ['Profile', `${view.profile} (current)`],
      ['API key', view.api_key_id],
      ['Saved to', view.config_path],
    ],
    style,
  )}`;
}

export interface ProfileRow {
  name: string;
  current: boolean;
  api_url: string | null;
  /** Masked form of the stored key (`hr_…a1b2`), null when the profile has no key. */
  api_key_hint: string | null;
}

export interface ConfigListView {
  config_path: string;
  current_profile: string | null;
  profiles: ProfileRow[];
}

export function formatProfiles(view: ConfigListView, style: Style): string {
  view = terminalSafe(view);
  if (view.profiles.length === 0) {
    return `No profiles in ${view.config_path}. Run \`hookrelay login\` to add one.`;
  }
  const table = formatTable<ProfileRow>(
    [
      { header: ' ', value: (p) => (p.current ? '*' : ' '), color: (text, p, s) => (p.current ? s.green(text) : text) },
      { header: 'PROFILE', value: (p) => p.name, color: (text, p, s) => (p.current ? s.bold(text) : text) },
      { header: 'API URL', value: (p) => p.api_url ?? '(default)' },
      { header: 'API KEY', value: (p) => p.api_key_hint ?? '(logged out)', color: (text, p, s) => (p.api_key_hint === null ? s.dim(text) : text) },
    ],
    view.profiles,
    style,
  );
  return `${table}\n${style.dim(`(${view.config_path})`)}`;
}
