/// Which offline devices of a user get a push (`HERALD_PUSH_MULTI_DEVICE`), after Sendbird's
/// multi-device settings: a device with an open live stream is online and never gets one.
public enum MultiDevicePolicy: String, Sendable, CaseIterable {
    /// Push only when every device of the user is offline: a user with any live stream (a device, or a
    /// browser without one) sees the change there.
    case allOffline = "all_offline"
    /// Push to every offline device, whatever the user's other devices do.
    case anyOffline = "any_offline"
}
