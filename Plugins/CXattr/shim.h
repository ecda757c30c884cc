// Extended attributes of files (fgetxattr, fsetxattr, fremovexattr): not in Swift's Glibc module. DiskCache keeps
// a caller's extended data of an entry there (SDWebImage's SDDiskCache does the same on Apple platforms).
#include <sys/xattr.h>
