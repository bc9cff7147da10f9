"""Map layouts: one string per row, row 0 at the top; W wood source, S stone source, @ water.

The quadrant maps are the AI Economist's quadrant_25x25_20each_30clump layouts (BSD-3-Clause,
Salesforce): four rooms split by water with gaps for doors, wood in the top rooms, stone on the left.
"""

QUADRANT_25X25 = (
    'WWWWW  W    @ W          ',
    'WW W        @ W      W WW',
    ' W          @         W W',
    'SW S S      @            ',
    '            @   W      W ',
    ' SS                      ',
    ' S                       ',
    '                         ',
    '                         ',
    'S      S    @            ',
    '            @            ',
    '            @            ',
    '@@@@@    @@@@@@@    @@@@@',
    ' S          @            ',
    'S S         @            ',
    '   S        @            ',
    'SS                       ',
    ' SS                      ',
    'SS                       ',
    '  S                      ',
    '            @            ',
    '            @            ',
    '            @            ',
    '            @            ',
    'S           @            ',
)

QUADRANT_25X25_NO_WATER = (
    'WWWWW  W      W          ',
    'WW W          W      W WW',
    ' W                    W W',
    'SW S S                   ',
    '                W      W ',
    ' SS                      ',
    ' S                       ',
    '                         ',
    '                         ',
    'S      S                 ',
    '                         ',
    '                         ',
    '                         ',
    ' S                       ',
    'S S                      ',
    '   S                     ',
    'SS                       ',
    ' SS                      ',
    'SS                       ',
    '  S                      ',
    '                         ',
    '                         ',
    '                         ',
    '                         ',
    'S                        ',
)

LAYOUTS = {
    "quadrant_25x25_20each_30clump": QUADRANT_25X25,
    "quadrant_25x25_20each_30clump_no_water": QUADRANT_25X25_NO_WATER,
}
"""Named layouts; layout="random" draws a fresh map per env and episode instead."""

TILE_EMPTY, TILE_WOOD, TILE_STONE, TILE_WATER = 0, 1, 2, 3
_CODES = {" ": TILE_EMPTY, "W": TILE_WOOD, "S": TILE_STONE, "@": TILE_WATER}


def tile_codes(rows: tuple[str, ...]) -> tuple[int, ...]:
    """The layout as a flat row-major tuple of tile codes (any unknown character is empty)."""
    return tuple(_CODES.get(ch, TILE_EMPTY) for row in rows for ch in row)
