-- Translated templates. A notification keeps its rendering in each of its template's variants
-- (`variants`: {"de": {"data", "push_title", "push_body", "actions"}, …}, by lower-cased language
-- tag); each copy names the variant its user's locale chose when it was written (`variant`, NULL:
-- the notification's own content). Copies read `coalesce(r.data, n.variants -> r.variant -> 'data',
-- n.data)`: a fan-out writes only the short tag per copy, set-based, whatever the languages.
ALTER TABLE notifications ADD COLUMN variants jsonb NOT NULL DEFAULT '{}';
ALTER TABLE notification_recipients ADD COLUMN variant text;
