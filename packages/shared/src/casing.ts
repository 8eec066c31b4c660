/**
 * A snake_case name in camelCase (`hmac_header_name` → `hmacHeaderName`): how the server names in
 * code the fields the protocol and the database name in snake_case.
 */
export type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

/** An object type with its snake_case keys in camelCase, each value as it was. */
export type Camelized<T> = { [K in keyof T as K extends string ? CamelCase<K> : K]: T[K] };
