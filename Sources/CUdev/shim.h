#ifndef LATCHKEY_CUDEV_SHIM_H
#define LATCHKEY_CUDEV_SHIM_H
#include <libudev.h>
#endif
