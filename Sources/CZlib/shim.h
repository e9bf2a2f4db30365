#ifndef HERALD_CZLIB_SHIM_H
#define HERALD_CZLIB_SHIM_H

// The system zlib (Debian: zlib1g-dev), for gzip-compressed recorded logs. Only
// HeraldReplay/LineReader.swift imports this module.
#include <zlib.h>

#endif
