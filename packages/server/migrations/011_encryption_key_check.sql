-- A fixed text sealed under the encryption key the stored secrets are sealed with. A process started
-- with another key finds that out before it serves, instead of answering 500 to every request that
-- needs a secret. One row; rewritten only when every secret has been sealed again under a new key.
CREATE TABLE encryption_key_check (
  singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  check_value  text NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now()
);
