import { Flags } from '@oclif/core';

/** Flags shared by `endpoints create` and `endpoints update`: one description, one range text. */
export const endpointSettingFlags = {
  description: Flags.string({ summary: 'Free text shown in lists (at most 500 characters).' }),
  'rate-limit': Flags.integer({ summary: 'Deliveries per second to this endpoint, 0-1000 (0 = no limit).' }),
  burst: Flags.integer({ summary: 'Deliveries allowed at once above the rate, 0-10000 (0 = the rate).' }),
  header: Flags.string({
    summary: 'Custom header added to every delivery, as NAME=VALUE. Repeatable.',
    multiple: true,
    multipleNonGreedy: true,
  }),
};

/** An endpoint id argument's description, the same everywhere. */
export const ENDPOINT_ID_DESCRIPTION = 'Endpoint id (ep_ followed by 32 hex characters).';
