-- The channel list's own change log: `GET /v1/me/channels?token=` answers the entries
-- that changed since the token and the channels that left the list, with the same positions as the
-- collections (transaction ids, read below the snapshot's horizon; see CollectionStore+ChannelList).
--
-- What an entry shows changes with one of:
--   * the user's copies in the channel (sends, fan-out, reads, receipts, updates, deletes, resets):
--     each already takes a new change_xid, read through notification_recipients_changes;
--   * the channel itself (name, cover, custom type): channels.change_xid, set by every PUT that
--     changes it;
--   * the user opening the channel (first load, read or seen), which can add it to the list:
--     channel_states.opened_xid, set when `opened` turns true. Nothing else in a state shows in the
--     list without a copy changing too (folding moves a broadcast from the per-request count into the
--     counter: the sum stays);
--   * the channel being deleted, which removes its copies and states outright: a removal per user
--     who had either, kept until compaction like the copies' tombstones.
-- Existing rows take 0 (older than any token), so nothing is reported twice.
ALTER TABLE channels ADD COLUMN change_xid bigint NOT NULL DEFAULT 0;
ALTER TABLE channel_states ADD COLUMN opened_xid bigint NOT NULL DEFAULT 0;

CREATE TABLE channel_list_removals (
    user_key bigint NOT NULL,
    channel_url text NOT NULL,
    change_xid bigint NOT NULL,
    PRIMARY KEY (user_key, channel_url)
);
-- Compaction removes the old ones by position.
CREATE INDEX channel_list_removals_change ON channel_list_removals (change_xid);
