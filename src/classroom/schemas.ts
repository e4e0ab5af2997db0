// Response shapes, as loose as the field notes require: extra fields are kept, ids are opaque.
import { z } from 'zod';

export const envelopeSchema = z.looseObject({
  status: z.unknown(),
  message: z.unknown().optional(),
  data: z.unknown().optional(),
});

export const classRecordSchema = z.looseObject({
  _id: z.string(),
  name: z.string().optional(),
  subject: z.unknown().optional(),
  archived: z.boolean().optional(),
  // "" while the link is disabled (field notes), absent in the short record.
  joinMagicLink: z.string().optional(),
});
export type ClassRecord = z.infer<typeof classRecordSchema>;

export const listItemSchema = z.looseObject({
  _id: z.string().optional(),
  name: z.string(),
  subject: z.unknown().optional(),
  classNumber: z.unknown().optional(),
});
export type ListItem = z.infer<typeof listItemSchema>;

export const listingSchema = z.looseObject({
  classes: z.array(listItemSchema).default([]),
  pendingClasses: z.array(listItemSchema).default([]),
  hiddenClasses: z.array(listItemSchema).default([]),
});
export type InstituteListing = z.infer<typeof listingSchema>;
