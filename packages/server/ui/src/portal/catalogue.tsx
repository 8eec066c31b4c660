import type { EventTypeOut } from '@hookrelay/shared';
import { page } from '../api.js';
import { ErrorBox, JsonTree, Loading } from '../components.js';
import { useLoad, type Loaded } from '../load.js';

/** The catalogue's types a portal may see (the server leaves out archived ones and hookrelay's own): the first 200, by name. */
export function useCatalogue(): Loaded<EventTypeOut[]> {
  return useLoad(() => page<EventTypeOut>('/v1/event-types', { limit: 200 }).then((p) => p.data), []);
}

/** Each event type a customer can subscribe to, with its description, schema and example. */
export function PortalCatalogue() {
  const types = useCatalogue();
  return (
    <section aria-labelledby="catalogue-title">
      <h1 id="catalogue-title">Event types</h1>
      <ErrorBox error={types.error} />
      <Loading when={types.loading && types.value === undefined} />
      {types.value?.length === 0 ? <p class="muted">No event type is published yet.</p> : null}
      <div class="types" data-testid="catalogue">
        {types.value?.map((type) => (
          <article key={type.name} aria-labelledby={`type-${type.name}`}>
            <h2 id={`type-${type.name}`}>
              <code>{type.name}</code>
            </h2>
            <p>{type.description === '' ? <span class="muted">No description.</span> : type.description}</p>
            <h3>Schema</h3>
            {type.schema === null ? <p class="muted">No schema: any JSON payload.</p> : <div class="body json"><JsonTree value={type.schema} /></div>}
            <h3>Example</h3>
            {type.example === null ? <p class="muted">No example.</p> : <div class="body json" data-testid={`example-${type.name}`}><JsonTree value={type.example} /></div>}
          </article>
        ))}
      </div>
    </section>
  );
}
