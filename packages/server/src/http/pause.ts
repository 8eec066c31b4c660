/** The two routes `/:id/pause` and `/:id/resume` of an endpoint kind, and the `paused` each one sets. */
export const PAUSE_ACTIONS = [
  ['pause', true],
  ['resume', false],
] as const;
