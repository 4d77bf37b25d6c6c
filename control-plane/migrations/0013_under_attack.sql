-- Under Attack Mode (GET/PUT /domains/{domain}/under-attack): while on, the edge challenges every request of the domain.
ALTER TABLE domains ADD COLUMN IF NOT EXISTS under_attack boolean NOT NULL DEFAULT false;
