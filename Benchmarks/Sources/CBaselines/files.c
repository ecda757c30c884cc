#include "CBaselines.h"
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

long cb_read_file(const char *path, uint8_t *buffer, size_t capacity) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t total = 0;
    while (total < capacity) {
        ssize_t n = read(fd, buffer + total, capacity - total);
        if (n < 0) {
            close(fd);
            return -1;
        }
        if (n == 0) break;
        total += (size_t)n;
    }
    close(fd);
    return (long)total;
}

int cb_write_rename(const char *directory, const char *name, const uint8_t *data, size_t length) {
    char temp[4096], final[4096];
    snprintf(temp, sizeof temp, "%s/.tmp-%s-%d", directory, name, (int)getpid());
    snprintf(final, sizeof final, "%s/%s", directory, name);
    int fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    size_t written = 0;
    while (written < length) {
        ssize_t n = write(fd, data + written, length - written);
        if (n <= 0) {
            close(fd);
            unlink(temp);
            return -1;
        }
        written += (size_t)n;
    }
    if (close(fd) != 0 || rename(temp, final) != 0) {
        unlink(temp);
        return -1;
    }
    return 0;
}

long cb_walk_stat(const char *directory, long long *totalSize) {
    DIR *dir = opendir(directory);
    if (dir == NULL) return -1;
    long count = 0;
    long long size = 0, times = 0; // mtimes are read as a cache sweep would
    char path[4096];
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", directory, entry->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        count++;
        size += st.st_size;
        times += st.st_mtim.tv_sec;
    }
    closedir(dir);
    (void)times;
    *totalSize = size;
    return count;
}
