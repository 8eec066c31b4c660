/** A message id argument's description, the same everywhere. */
export const MESSAGE_ID_DESCRIPTION = 'Outbound message id (a UUID, from `messages send` or `logs`).';
