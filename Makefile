# Cairn -- one Makefile for the whole tree.
#
#   make            build bin/cairnd
#   make check      install what is missing, build, lint, run every test layer
#   make demo       install, build, start the local stack (see README)
#   make demo-down  stop it, keeping ./var
#   make unit       C unit tests        make asan   unit tests under ASan+UBSan
#   make system     pytest system tests make lint   clang-format + cppcheck
#   make bench      benchmarks under tests/bench

BUILD   ?= build
CC      ?= cc
PYTHON  ?= /usr/bin/python3
PKGS     = libmicrohttpd jansson libpq openssl

CPPFLAGS += -Ilib -Icontrolplane -I$(BUILD)/gen -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
CPPFLAGS += $(shell pkg-config --cflags $(PKGS) 2>/dev/null) -I$(shell pg_config --includedir 2>/dev/null)
OPT      ?= -O2 -g
SANITIZE ?=
CFLAGS    = $(OPT) $(SANITIZE) -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wno-missing-field-initializers -pthread -MMD -MP
LDLIBS   += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpq -pthread

LIB_SRC  := $(wildcard lib/*.c)
CP_SRC   := $(filter-out controlplane/main.c,$(wildcard controlplane/*.c))
MIGRATIONS := $(sort $(wildcard migrations/*.sql))
UNIT_SRC := $(wildcard tests/unit/test_*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CP_OBJ   := $(CP_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/migrations.o
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all deps check unit asan system contract lint format bench demo demo-down clean
.DEFAULT_GOAL := all

all: bin/cairnd

bin/cairnd: $(BUILD)/controlplane/main.o $(BUILD)/libcairnd.a $(BUILD)/libcairn.a
	@mkdir -p $(@D)
	@echo "LD $@"
	@$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libcairn.a: $(LIB_OBJ)
	@$(AR) rcs $@ $^

$(BUILD)/libcairnd.a: $(CP_OBJ)
	@$(AR) rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	@echo "CC $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/gen/migrations.c: $(MIGRATIONS) scripts/embed-migrations
	@mkdir -p $(@D)
	@scripts/embed-migrations $@ $(MIGRATIONS)

$(BUILD)/gen/migrations.o: $(BUILD)/gen/migrations.c
	@echo "CC $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-overlength-strings -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libcairnd.a $(BUILD)/libcairn.a
	@mkdir -p $(@D)
	@echo "CC $<"
	@$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $(filter %.c %.a,$^) $(LDLIBS) -lcmocka

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

deps:
	@scripts/install-deps

unit: $(UNIT_BIN)
	@fail=0; for t in $(UNIT_BIN); do echo "== $$t"; $$t || fail=1; done; exit $$fail

asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g" \
		SANITIZE="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" unit

tests/contract/node_modules: tests/contract/package.json tests/contract/package-lock.json
	cd tests/contract && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

contract: bin/cairnd tests/contract/node_modules
	$(PYTHON) -m pytest -q tests/contract

system: bin/cairnd
	$(PYTHON) -m pytest -q tests/system

FORMAT_SRC = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find lib controlplane tests -name '*.[ch]')

lint:
	clang-format --dry-run --Werror $(FORMAT_SRC)
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
		--inline-suppr --std=c11 -Ilib -Icontrolplane lib controlplane

format:
	clang-format -i $(FORMAT_SRC)

check: deps
	$(MAKE) all
	$(MAKE) lint
	$(MAKE) unit
	$(MAKE) asan
	$(MAKE) contract
	$(MAKE) system

bench: deps all
	tests/bench/http-catalog

demo: deps all
	scripts/demo up

demo-down:
	scripts/demo down

clean:
	rm -rf build build-asan bin
