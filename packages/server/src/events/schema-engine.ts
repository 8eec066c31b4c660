import { Ajv2020, type ErrorObject, type Options, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { RE2JS } from 're2js';
import type { JsonSchemaObject } from '@hookrelay/shared';

/**
 * JSON Schema (draft 2020-12) compilation for the event-type catalogue, on Ajv's 2020 build with
 * ajv-formats. Loaded with the first schema (`event-schemas.ts`): Ajv takes longer to load than
 * the rest of a start. The schemas are a client's, so Ajv's options are set for untrusted ones.
 */

export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/** The first check a value failed: where in the value (a JSON pointer), which keyword, and what it says. */
export interface SchemaFailure {
  pointer: string;
  keyword: string;
  message: string;
}

/** A compiled schema: null when `value` matches, else its first failure. */
export type CompiledSchema = (value: unknown) => SchemaFailure | null;

export type SchemaCompilation = { ok: true; check: CompiledSchema } | { ok: false; problem: string };

/** Long client-chosen names and pointers are cut in messages, which are one line of an answer. */
function clip(text: string, max = 200): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/**
 * Ajv's regular expressions on RE2 (linear time), as Ajv's documentation advises for untrusted
 * schemas: with V8's backtracking engine a `pattern` such as `^(a+)+$` takes exponential time on a
 * short payload, and blocks the process while it runs. RE2 has no lookaround and no backreferences;
 * a pattern that uses them is refused when the schema is compiled.
 */
const re2Engine = Object.assign(
  (pattern: string): { test(text: string): boolean } => {
    let compiled: RE2JS;
    try {
      compiled = RE2JS.compile(RE2JS.translateRegExp(pattern));
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(`pattern ${clip(JSON.stringify(pattern))} cannot be used: ${reason} (patterns run on RE2: no lookaround, no backreferences)`);
    }
    return { test: (text) => compiled.test(text) };
  },
  { code: 're2js' },
);

const OPTIONS: Options = {
  // Unknown keywords and formats are refused: a typo (`requird`) would otherwise check nothing.
  strictSchema: true,
  strictNumbers: true,
  // Style rules that refuse valid schemas (`properties` without `type: object`), and would log.
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  logger: false,
  // The first failure is what an answer names; collecting every one costs time on a bad payload.
  allErrors: false,
  // Each $ref its own function: inlined, a chain of definitions that each use the last twice
  // doubles the code at every step.
  inlineRefs: false,
  // Large `required` and `enum` lists as loops rather than one comparison each in the code.
  loopRequired: 20,
  loopEnum: 20,
  // `required` and `properties` see a payload's own keys only, never what it inherits.
  ownProperties: true,
  code: { regExp: re2Engine },
  // Checking never changes a payload: no coerceTypes, useDefaults or removeAdditional.
};

function newAjv(options: Options): Ajv2020 {
  const ajv = new Ajv2020({ ...OPTIONS, ...options });
  ajvFormats.default(ajv);
  return ajv;
}

function failureOf(error: ErrorObject | undefined): SchemaFailure {
  if (error === undefined) return { pointer: '', keyword: 'schema', message: 'does not match' };
  const params = error.params as Record<string, unknown>;
  const extra = params.additionalProperty ?? params.unevaluatedProperty;
  const message =
    (error.keyword === 'additionalProperties' || error.keyword === 'unevaluatedProperties') && typeof extra === 'string'
      ? `must not have the property ${clip(JSON.stringify(extra))}`
      : (error.message ?? 'is invalid');
  return { pointer: error.instancePath, keyword: error.keyword, message };
}

/** `at /amount: must be >= 0 (minimum)`: a failure as the end of an error message. */
export function describeFailure(failure: SchemaFailure): string {
  const where = failure.pointer === '' ? 'the top level' : clip(failure.pointer);
  return `at ${where}: ${failure.message} (${failure.keyword})`;
}

/** Ajv's sentence for a schema it cannot compile, reworded where it would mislead. */
function compileProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const unknownFormat = /^unknown format "(.*)" ignored in schema at path "(.*)"$/s.exec(message);
  if (unknownFormat) return `unknown format ${clip(JSON.stringify(unknownFormat[1]))} at ${clip(unknownFormat[2]!)}`;
  return clip(message.replace(/^strict mode: /, ''), 500);
}

function checkerOf(validate: ValidateFunction): CompiledSchema {
  return (value) => {
    let valid: boolean;
    try {
      valid = validate(value) as boolean;
    } catch (error) {
      // A recursive schema follows the payload down: one nested deeper than the stack allows.
      if (error instanceof RangeError) return { pointer: '', keyword: '$ref', message: 'nests too deeply to be checked against the schema' };
      throw error;
    }
    return valid ? null : failureOf(validate.errors?.[0]);
  };
}

/**
 * Compiles client schemas. The meta-schema check runs on one instance; each schema is then
 * compiled on an Ajv of its own: an instance keeps every schema it has compiled (and the code made
 * for it) for as long as it lives, so a shared one would grow with each new schema forever. A
 * compiled schema holds only its own instance, and goes with it.
 */
export class SchemaEngine {
  private readonly meta = newAjv({});

  compile(schema: JsonSchemaObject): SchemaCompilation {
    if (Object.hasOwn(schema, '$schema') && schema.$schema !== DRAFT_2020_12) {
      return { ok: false, problem: `$schema must be ${DRAFT_2020_12} or left out: schemas are draft 2020-12` };
    }
    if (!this.meta.validateSchema(schema)) {
      return { ok: false, problem: describeFailure(failureOf(this.meta.errors?.[0] ?? undefined)) };
    }
    let validate: ValidateFunction;
    try {
      validate = newAjv({ meta: false, validateSchema: false }).compile(schema);
    } catch (error) {
      return { ok: false, problem: compileProblem(error) };
    }
    // An $async schema's function answers a promise, which would read as "valid".
    if ((validate as { $async?: unknown }).$async === true) return { ok: false, problem: '$async schemas cannot be used' };
    return { ok: true, check: checkerOf(validate) };
  }
}
