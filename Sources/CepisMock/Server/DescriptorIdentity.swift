import CepisSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A descriptor number with the device and inode it referred to, so a test can tell whether
/// it is still open (a reused number refers to another inode).
struct DescriptorIdentity: Hashable, Sendable {
  var fd: Int32
  var device: UInt64
  var inode: UInt64

  init?(_ fd: Int32) {
    var info = stat()
    guard fstat(fd, &info) == 0 else { return nil }
    self.fd = fd
    self.device = UInt64(truncatingIfNeeded: info.st_dev)
    self.inode = UInt64(truncatingIfNeeded: info.st_ino)
  }
}
