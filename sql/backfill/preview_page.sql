-- The applied page without writes: the same resources and would_insert flags.
WITH @page_resources@,
@unwritten_resources@,
@page_summary@