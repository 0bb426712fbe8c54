import ChildProcess
import Glibc
import Testing

@Suite("Child processes")
struct ChildProcessTests {
    /// A child keeps none of its parent's descriptors but the three standard ones. NIO's accepted
    /// sockets are not close-on-exec; a PostgreSQL server started by the test support while one was
    /// open kept a copy, and the connection stayed open for minutes after Herald closed it.
    @Test func aChildDoesNotInheritDescriptors() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)  // no O_CLOEXEC, like NIO's accepted sockets
        let (reading, writing) = (ends[0], ends[1])
        defer { close(reading) }
        let child = try ChildProcess.spawn(["/bin/sleep", "60"], environment: [], output: .file("/dev/null"))
        defer {
            kill(child.pid, SIGKILL)
            _ = child.wait()
        }
        close(writing)
        // With the parent's write end closed, the read end ends at once — unless the child kept a copy.
        var ready = pollfd(fd: reading, events: Int16(POLLIN), revents: 0)
        let ended = poll(&ready, 1, 10_000) == 1
        #expect(ended, "the pipe did not end: the child holds its write end")
        if ended {
            var byte: UInt8 = 0
            #expect(read(reading, &byte, 1) == 0)
        }
    }
}
