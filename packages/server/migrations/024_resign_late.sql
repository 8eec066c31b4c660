-- Late deliveries re-signed (docs/api.md, Late deliveries re-signed): whether an inbound endpoint
-- re-signs a delivery that leaves long after its sender's signed timestamp (on by default, existing
-- endpoints too), and, on each attempt and each listener's answer, whether what went out was
-- re-signed. The stored message itself always keeps the headers it arrived with.
ALTER TABLE inbound_endpoints ADD COLUMN resign_late boolean NOT NULL DEFAULT true;
ALTER TABLE delivery_attempts ADD COLUMN resigned boolean NOT NULL DEFAULT false;
ALTER TABLE inbound_message_answers ADD COLUMN resigned boolean NOT NULL DEFAULT false;
