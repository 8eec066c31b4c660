import { z } from 'zod';

/** GET /v1/whoami */
export const WhoamiOut = z.object({
  project_id: z.string(),
  project_name: z.string(),
  api_key_id: z.string(),
});
export type WhoamiOut = z.infer<typeof WhoamiOut>;
