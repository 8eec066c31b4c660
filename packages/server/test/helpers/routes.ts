import type { FastifyInstance } from 'fastify';

/** One method of one route the app serves, with Fastify's path syntax (`/v1/endpoints/:id`). */
export interface ServedRoute {
  method: string;
  path: string;
}

/** An operation of the OpenAPI document (only the parts the tests read). */
export interface OpenApiOperation {
  parameters?: { in: 'path' | 'query' | 'header'; name: string; required?: boolean; schema: JsonSchema }[];
  requestBody?: { content?: { 'application/json'?: { schema: JsonSchema } } };
}

/** The JSON Schema subset that the zod → OpenAPI transform writes. */
export interface JsonSchema {
  type?: string;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  nullable?: boolean;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
}

/**
 * Every route and method the app serves, read from Fastify's own route tree, so that a route added
 * tomorrow is in the list without anyone editing a test. HEAD is left out: Fastify adds it to every
 * GET and runs the GET handler for it.
 */
export function servedRoutes(app: FastifyInstance): ServedRoute[] {
  const tree = app.printRoutes({ commonPrefix: false });
  const routes: ServedRoute[] = [];
  const prefixes: string[] = [];
  for (const line of tree.split('\n')) {
    // Each level of the tree is four characters of "│   ", "    ", "├── " or "└── ".
    const match = /^((?:[│ ]   )*)(?:[├└]── )(.+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    const path = (depth === 0 ? '' : prefixes[depth - 1]!) + match[2]!;
    prefixes[depth] = path;
    prefixes.length = depth + 1;
    for (const method of (match[3] ?? '').split(',').map((m) => m.trim()).filter((m) => m.length > 0)) {
      if (method !== 'HEAD') routes.push({ method, path });
    }
  }
  return routes;
}

export const routeKey = (route: ServedRoute) => `${route.method} ${route.path}`;

/** `/v1/endpoints/:id` → `/v1/endpoints/{id}`, as the OpenAPI document writes it. */
export const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

export async function openApiOperations(app: FastifyInstance, apiKey: string): Promise<Map<string, OpenApiOperation>> {
  const res = await app.inject({ method: 'GET', url: '/v1/openapi.json', headers: { authorization: `Bearer ${apiKey}` } });
  if (res.statusCode !== 200) throw new Error(`GET /v1/openapi.json answered ${res.statusCode}: ${res.body}`);
  const doc = res.json() as { paths: Record<string, Record<string, OpenApiOperation>> };
  const operations = new Map<string, OpenApiOperation>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) operations.set(`${method.toUpperCase()} ${path}`, operation);
  }
  return operations;
}

/** The `:name` parameters of a Fastify path, in order (`*` is the wildcard). */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/:(\w+)|\*/g)].map((m) => m[1] ?? '*');
}
