/**
 * What `node --disable-proto=delete` does, for a process started as `hookrelay-server`, whose
 * shebang cannot carry node flags. Without the `Object.prototype.__proto__` accessor, `obj.__proto__`
 * and `obj['__proto__'] = value` read and write an ordinary own property: no name that input
 * chooses can reach a prototype, whatever code it travels through. `Object.getPrototypeOf` and
 * `{ __proto__: null }` literals (syntax, not the accessor) keep working, and neither the server nor
 * its dependencies use the accessor (the server's tests run its bundle with it removed).
 */
export function deleteProtoAccessor(): void {
  delete (Object.prototype as { __proto__?: unknown }).__proto__;
}
