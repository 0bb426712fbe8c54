-- Devices of three push services: APNs (iPhones, as before), FCM (Android) and Web Push (browsers).
--
-- `token` is what the service addresses: the APNs device token (lowercase hex), the FCM registration
-- token, or the Web Push subscription's endpoint URL. It is unique per service, not across them.
-- `environment` is APNs's alone (empty for the others); `topic` is the app at its service: the APNs
-- topic (bundle id), the FCM project id (empty: the first FCM credential), empty for Web Push, whose
-- subscriptions carry the browser's keys instead.
ALTER TABLE devices
    ADD COLUMN service text NOT NULL DEFAULT 'apns' CHECK (service IN ('apns', 'fcm', 'webpush')),
    ADD COLUMN webpush_p256dh bytea,
    ADD COLUMN webpush_auth bytea;
ALTER TABLE devices DROP CONSTRAINT devices_environment_check;
ALTER TABLE devices ADD CONSTRAINT devices_service_fields CHECK (
    (service = 'apns' AND environment IN ('sandbox', 'production') AND webpush_p256dh IS NULL AND webpush_auth IS NULL)
    OR (service = 'fcm' AND environment = '' AND webpush_p256dh IS NULL AND webpush_auth IS NULL)
    OR (service = 'webpush' AND environment = '' AND topic = '' AND webpush_p256dh IS NOT NULL AND webpush_auth IS NOT NULL
        AND octet_length(webpush_p256dh) = 65 AND octet_length(webpush_auth) = 16)
);
-- Token first: a device named by its APNs token is found through this index.
ALTER TABLE devices DROP CONSTRAINT devices_token_key;
ALTER TABLE devices ADD CONSTRAINT devices_token_service_key UNIQUE (token, service);

-- Each service's lane claims its own devices' pushes: the service is copied beside the push state
-- and the alerts (a device's service never changes), so that a lane's claim reads its own service's
-- due rows through the index, never another's backlog.
ALTER TABLE device_push_state ADD COLUMN service text NOT NULL DEFAULT 'apns';
DROP INDEX device_push_state_due;
CREATE INDEX device_push_state_due ON device_push_state (service, next_attempt_at)
    WHERE wanted_xid IS NOT NULL AND NOT outstanding;
ALTER TABLE alert_pushes ADD COLUMN service text NOT NULL DEFAULT 'apns';
DROP INDEX alert_pushes_due;
CREATE INDEX alert_pushes_due ON alert_pushes (service, next_attempt_at);

ALTER TABLE push_failures ADD COLUMN service text NOT NULL DEFAULT 'apns';

-- FCM credentials: a service account's key file, AES-256-GCM sealed under HERALD_SECRET_KEY (as
-- apns_credentials' secrets are); what identifies it is kept beside it in the clear.
CREATE TABLE fcm_credentials (
    name text PRIMARY KEY,
    project_id text NOT NULL,
    client_email text NOT NULL,
    private_key_id text NOT NULL,
    secret bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
